#!/bin/bash
#PBS -h
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
