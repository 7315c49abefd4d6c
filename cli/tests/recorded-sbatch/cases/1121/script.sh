#!/bin/bash
#PBS -l cput=10:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
