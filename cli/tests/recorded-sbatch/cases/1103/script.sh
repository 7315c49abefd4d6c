#!/bin/bash
#PBS -N
#PBS nextline
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
